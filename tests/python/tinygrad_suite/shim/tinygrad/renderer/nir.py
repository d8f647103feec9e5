from tinygrad._internal import Internal
class NIRRenderer(Internal): pass
