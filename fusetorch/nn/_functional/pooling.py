"""nn.functional: pooling."""
__all__: list = []
