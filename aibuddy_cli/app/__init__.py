"""What builds the services for one vault and user (session.py, the composition root) and what
spans several of them: a team vault's two roots (team.py), git's merge driver (merge_driver.py),
`aibuddy doctor` (doctor.py) and `aibuddy store copy` (store_copy.py)."""
