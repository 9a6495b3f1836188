"""`aibuddy ui`: a local web page to see and steer the vault (front end).

guard.py: who may use the page (a one-time link, then a cookie), Host and Origin checks, and the
token every change carries; pages.py: the pages, each a thin view over the registry's operations;
views.py: the HTML (Jinja2 templates, escaped); charts.py: the server-drawn SVG of use over time;
server.py: the app and `serve_ui`. No JavaScript and no build step: forms and links.
"""
