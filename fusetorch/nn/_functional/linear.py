"""nn.functional: linear."""
__all__: list = []
