"""nn.functional: normalization."""
__all__: list = []
