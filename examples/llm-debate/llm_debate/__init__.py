"""Multi-agent debate (Du et al., "Improving Factuality and Reasoning in Language Models through Multiagent
Debate", arXiv 2305.14325) as a swarm-tui method, installed as a plugin.

``method``: the protocol, its options and its registration (the ``swarm_tui.methods`` entry point names
``method:DEBATE``); ``prompts``: what each debater is asked; ``vote``: the final answer; ``steer``: notes
and stop at the round barrier; ``demo``: what the scripted server plays for it; ``fidelity``: where it
departs from the paper.
"""
