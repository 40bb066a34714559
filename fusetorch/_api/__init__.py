"""The torch.* names that fusetorch's modules list (their PUBLIC tables), as one generated
module of explicit imports (`torch_names.py`, written by `python -m fusetorch._api.generate`)
that fusetorch/__init__.py star-imports."""
