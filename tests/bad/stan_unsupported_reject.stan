data {
  int<lower=0> N;
  vector[N] y;
}
parameters {
  real mu;
}
model {
  if (N == 0) {
    reject("no data");
  }
  y ~ normal(mu, 1);
}
