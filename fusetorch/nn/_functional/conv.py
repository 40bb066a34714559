"""nn.functional: conv."""
__all__: list = []
