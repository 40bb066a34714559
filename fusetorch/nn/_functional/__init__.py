"""The implementations behind nn.functional, one family per file."""
