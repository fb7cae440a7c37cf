"""The OpenAI-compatible client wrapper and the MiniLM embedder."""
