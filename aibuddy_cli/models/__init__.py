"""The model layer: the only code that talks to language models (calls.py, through litellm), the
roles' settings (roles.py), the long-lived threads and the worker process that keep litellm warm
(threads.py, worker.py, worker_client.py), the tool loop (agent.py) and its tools' arguments."""
