"""The real-model tier: the app against llama.cpp's server and SmolLM2-135M-Instruct (pytest -m realmodel)."""
