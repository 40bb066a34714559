"""nn.functional: loss."""
__all__: list = []
