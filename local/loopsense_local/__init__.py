"""loopsense's local tooling: the CLI, operator commands, local gateway and embedded DynamoDB.

Installed by pyproject for development, tests and `loopsense serve`; never part of the Lambda
layer (shared/), which holds only what runs in Lambda.
"""
