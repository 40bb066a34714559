"""nn.functional: activation."""
__all__: list = []
