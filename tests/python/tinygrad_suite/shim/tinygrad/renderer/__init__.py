from tinygrad._internal import Internal
class Renderer(Internal): pass
