"""The bottom layer: what every package may import and which imports nothing of ours.

The errors' root, the secret masking rule and the vocabulary shared by several packages
(see docs/architecture.md for the layers and the contracts `lint-imports` keeps).
"""
