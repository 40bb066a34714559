"""nn.functional: dropout."""
__all__: list = []
