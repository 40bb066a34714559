"""nn.functional: sparse."""
__all__: list = []
