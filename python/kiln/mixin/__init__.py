"""Tensor's ops by area; each mixin turns tinygrad's arguments into one C++ call."""
