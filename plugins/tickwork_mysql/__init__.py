"""The MySQL / MariaDB store plugin (``pip install tickwork[mysql]``)."""
