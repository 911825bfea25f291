"""Columnar kernels: arrays in, arrays out (text tokens and n-grams, ranking, matching, quantiles, resampling)."""
