parameters {
  real mu;
}
model {
  if (mu > 0) {
    mu ~ normal(1, 1);
  } else {
    mu ~ normal(-1, 1);
  }
}
