"""ICAC'19: "Speeding up Deep Learning with Transient Servers" (ICAC 2019).

One module per figure or table, rebuilt from cake-lab/transient-deep-learning@87c6717 (see :mod:`perfmodel.papers`). Setting:
GCE, TensorFlow 1.10 + Tensor2Tensor, ResNet-32 on CIFAR-10, 64K steps, batch 128, asynchronous PS training, one on-demand PS.
Tuples in the tables are (mean, sample std with ddof=1).
"""
