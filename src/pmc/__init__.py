"""PeopleMakingConversation: a benchmark of how naturally real-time speech systems converse."""

__version__ = "0.1.0"

__all__ = ["__version__"]
