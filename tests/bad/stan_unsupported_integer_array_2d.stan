data {
  int<lower=1> M;
  int<lower=1> T;
  array[M, T] int<lower=0, upper=1> y;
}
parameters {
  real<lower=0, upper=1> p;
}
model {
  for (i in 1:M) {
    y[i] ~ bernoulli(p);
  }
}
