"""The only place YAML is read: positions kept, schemas checked, frozen models returned."""
