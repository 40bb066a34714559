"""The graph IR. Pure Python: nothing here imports numpy, cupy, or another fusetorch package."""
from . import dtypes, ops, shapes
from .graph import Graph, Node, make_node, toposort

__all__ = ["dtypes", "ops", "shapes", "Graph", "Node", "make_node", "toposort"]
