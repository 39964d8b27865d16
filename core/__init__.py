"""The bottom layer: what every package may import and which imports nothing of ours.

Only the errors' root lives here for now, with the vocabulary shared by several packages
(see docs/architecture.md for the layers and the contracts `lint-imports` keeps).
"""
