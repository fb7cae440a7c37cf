"""The shared runtime every method runs on: config, events, control, memory, LLM-call parsing, prompts, the engine."""
