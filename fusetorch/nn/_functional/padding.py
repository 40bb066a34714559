"""nn.functional: padding."""
__all__: list = []
