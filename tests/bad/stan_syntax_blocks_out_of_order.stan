parameters {
  real mu;
}
data {
  int<lower=0> N;
}
model {
  mu ~ normal(0, 1);
}
