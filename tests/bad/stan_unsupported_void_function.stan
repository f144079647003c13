functions {
  void check_positive(real x) {
    if (x < 0) reject("x must be positive");
  }
}
parameters {
  real mu;
}
model {
  mu ~ normal(0, 1);
}
