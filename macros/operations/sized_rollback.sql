{#-- dbt run-operation sized_rollback --args '{relation: schema.table}'
     Restores the table to its state before its last completed commit. --#}
{% macro sized_rollback(relation) %}
  {%- set rel = sized_resolve_relation(relation) -%}
  {%- set result = adapter.sized_rollback(rel) -%}
  {{ print(result.message) }}
  {{ return(result.instant) }}
{% endmacro %}
