"""Convolution and pooling ops: kernels, derivatives and meta functions."""
