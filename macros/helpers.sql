{#-- Helpers the operations share. --#}

{#-- 'schema.table', 'table' (target schema) or a Relation --#}
{% macro sized_resolve_relation(relation) %}
  {%- if relation is string -%}
    {%- set parts = relation.split('.') -%}
    {%- set schema_name = parts[-2] if parts | length > 1 else target.schema -%}
    {{ return(api.Relation.create(schema=schema_name, identifier=parts[-1], type='table')) }}
  {%- endif -%}
  {{ return(relation) }}
{% endmacro %}
