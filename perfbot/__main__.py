from .cli import perfbot

perfbot(prog_name="perfbot")
