{#-- dbt run-operation sized_repair --args '{relation: schema.table}'
     After files of the table were deleted or changed outside its commits (writes refuse to
     go on): records the table as it is now, as a new instant that lists the rows lost. --#}
{% macro sized_repair(relation) %}
  {%- set rel = sized_resolve_relation(relation) -%}
  {%- set message = adapter.sized_repair(rel) -%}
  {{ print(rel.schema ~ '.' ~ rel.identifier ~ ': ' ~ message) }}
  {{ return(message) }}
{% endmacro %}
