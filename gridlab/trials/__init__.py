"""Training cells as Ray Tune trials; the only package that imports ray.tune."""
