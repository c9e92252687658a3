"""Framework adapters, each an optional extra imported only when used
(``pip install "loopsense-sdk[langchain]"``; ``from loopsense_sdk.adapters.langchain import
...``). The SDK's core never imports them."""
