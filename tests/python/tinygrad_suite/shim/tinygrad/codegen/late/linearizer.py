from tinygrad._internal import internal
linearize = internal('linearize')
