"""nn layers: conv."""
__all__: list = []
