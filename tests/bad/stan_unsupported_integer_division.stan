parameters {
  real mu;
}
model {
  int half = 7 %/% 2;
  mu ~ normal(half, 1);
}
