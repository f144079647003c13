parameters {
  real<lower=0> sigma;
}
model {
  real s = 0;
  while (s < 3) {
    s += 1;
  }
  sigma ~ normal(s, 1);
}
