"""nteval: evaluate biomedical search engines without human relevance judgments (No-Title protocols)."""
__version__ = "0.1.0"
