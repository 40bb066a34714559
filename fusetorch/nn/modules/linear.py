"""nn layers: linear."""
__all__: list = []
