from tinygrad._internal import Internal
class PTXRenderer(Internal): pass
