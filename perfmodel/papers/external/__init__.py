"""External benchmarks: perfmodel's predictors on measurements nobody here made (NeuSight's labels), one module per item
(see :mod:`perfmodel.papers`)."""
