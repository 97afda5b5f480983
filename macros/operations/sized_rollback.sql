{#-- dbt run-operation sized_rollback --args '{relation: schema.table}'
     Restores the table to its state before its last completed commit. --#}
{% macro sized_rollback(relation) %}
  {%- set rel = sized_resolve_relation(relation) -%}
  {%- set undone = adapter.sized_rollback(rel) -%}
  {{ print('Rolled back ' ~ rel.schema ~ '.' ~ rel.identifier ~ ' to before commit ' ~ undone) }}
  {{ return(undone) }}
{% endmacro %}
