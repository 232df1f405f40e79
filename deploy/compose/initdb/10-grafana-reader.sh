#!/bin/sh
# Runs once when the PostgreSQL volume is created: a read-only role for Grafana that can SELECT
# every table `wanledger migrate` creates later (default privileges of the owner role).
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<SQL
CREATE ROLE grafana LOGIN PASSWORD '${GRAFANA_DB_PASSWORD:-grafana}';
GRANT CONNECT ON DATABASE "$POSTGRES_DB" TO grafana;
GRANT USAGE ON SCHEMA public TO grafana;
ALTER DEFAULT PRIVILEGES FOR ROLE "$POSTGRES_USER" IN SCHEMA public GRANT SELECT ON TABLES TO grafana;
SQL
