"""GET /v1/playbooks/{name}: agent.loops' playbooks over HTTP."""
