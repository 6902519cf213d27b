import type { GrammarId } from './languages';

/**
 * Tree-sitter tags queries, one per grammar, written for the grammars of
 * `@vscode/tree-sitter-wasm` 0.3.1 (tree-sitter-typescript 0.23, -javascript 0.25, -python 0.25,
 * -go 0.25, -rust, -java 0.23, -cpp). The grammar packages' own `tags.scm` files are not shipped
 * with the wasm, and they tag calls rather than every name used, so these follow their capture
 * convention in a smaller form:
 *
 * - `@definition.<kind>` on the node that spans the definition (its lines become a retrieval
 *   chunk), with `<kind>` one of `DefinitionKind`;
 * - `@name` on the defined name (its line is the definition's line and signature);
 * - `@reference` on every identifier-like node (a name used; the definition names themselves are
 *   subtracted by the extractor).
 *
 * When one definition node matches several patterns (a method is also a function; a
 * `const f = () => …` is also a constant), the extractor keeps the most specific kind (see
 * `KIND_PRIORITY` in `tags.ts`). Filters a query cannot express (a `const` declaration rather than
 * `let`, Java's `static final`, C's `const`/`constexpr`, Python's upper-case module constants) are
 * applied by the extractor on the captured nodes.
 */
export const TAGS_QUERIES: Readonly<Record<GrammarId, string>> = {
  typescript: typescriptQuery('type_identifier'),
  tsx: typescriptQuery('type_identifier'),
  javascript: `
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(class_declaration name: (identifier) @name) @definition.class
(class_body (method_definition name: (_) @name) @definition.method)
${topLevelConsts()}
[(identifier) (property_identifier) (shorthand_property_identifier)] @reference
`,
  python: `
(class_definition name: (identifier) @name) @definition.class
(class_definition body: (block (function_definition name: (identifier) @name) @definition.method))
(class_definition body: (block (decorated_definition definition: (function_definition name: (identifier) @name) @definition.method)))
(function_definition name: (identifier) @name) @definition.function
(module (expression_statement (assignment left: (identifier) @name) @definition.const))
(identifier) @reference
`,
  go: `
(function_declaration name: (identifier) @name) @definition.function
(method_declaration name: (field_identifier) @name) @definition.method
(type_declaration (type_spec name: (type_identifier) @name type: (interface_type)) @definition.interface)
(type_declaration (type_spec name: (type_identifier) @name) @definition.type)
(type_declaration (type_alias name: (type_identifier) @name) @definition.type)
(source_file (const_declaration (const_spec name: (identifier) @name) @definition.const))
[(identifier) (type_identifier) (field_identifier)] @reference
`,
  rust: `
(function_item name: (identifier) @name) @definition.function
(impl_item body: (declaration_list (function_item name: (identifier) @name) @definition.method))
(trait_item body: (declaration_list (function_item name: (identifier) @name) @definition.method))
(trait_item body: (declaration_list (function_signature_item name: (identifier) @name) @definition.method))
(struct_item name: (type_identifier) @name) @definition.type
(enum_item name: (type_identifier) @name) @definition.type
(union_item name: (type_identifier) @name) @definition.type
(type_item name: (type_identifier) @name) @definition.type
(trait_item name: (type_identifier) @name) @definition.interface
(const_item name: (identifier) @name) @definition.const
(static_item name: (identifier) @name) @definition.const
(macro_definition name: (identifier) @name) @definition.function
[(identifier) (type_identifier) (field_identifier)] @reference
`,
  java: `
(class_declaration name: (identifier) @name) @definition.class
(record_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(annotation_type_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.type
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method
(class_body (field_declaration declarator: (variable_declarator name: (identifier) @name)) @definition.const)
[(identifier) (type_identifier)] @reference
`,
  cpp: `
(function_definition declarator: (function_declarator declarator: (identifier) @name)) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @definition.function
(function_definition declarator: (reference_declarator (function_declarator declarator: (identifier) @name))) @definition.function
(function_definition declarator: (function_declarator declarator: (qualified_identifier name: (identifier) @name))) @definition.method
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (qualified_identifier name: (identifier) @name)))) @definition.method
(field_declaration_list (function_definition declarator: (function_declarator declarator: [(identifier) (field_identifier)] @name)) @definition.method)
(field_declaration_list (field_declaration declarator: (function_declarator declarator: [(identifier) (field_identifier)] @name)) @definition.method)
(declaration declarator: (function_declarator declarator: (identifier) @name)) @definition.function
(declaration declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @definition.function
(class_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.class
(struct_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.type
(union_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.type
(enum_specifier name: (type_identifier) @name body: (enumerator_list)) @definition.type
(type_definition declarator: (type_identifier) @name) @definition.type
(alias_declaration name: (type_identifier) @name) @definition.type
(preproc_def name: (identifier) @name) @definition.const
(preproc_function_def name: (identifier) @name) @definition.function
(translation_unit (declaration (type_qualifier) declarator: (init_declarator declarator: (identifier) @name)) @definition.const)
(namespace_definition body: (declaration_list (declaration (type_qualifier) declarator: (init_declarator declarator: (identifier) @name)) @definition.const))
[(identifier) (type_identifier) (field_identifier) (namespace_identifier)] @reference
`,
};

/** The TypeScript and TSX query (the same node types in both grammars). */
function typescriptQuery(typeName: string): string {
  return `
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(function_signature name: (identifier) @name) @definition.function
(class_declaration name: (${typeName}) @name) @definition.class
(abstract_class_declaration name: (${typeName}) @name) @definition.class
(class_body (method_definition name: (_) @name) @definition.method)
(class_body (abstract_method_signature name: (_) @name) @definition.method)
(interface_declaration name: (${typeName}) @name) @definition.interface
(type_alias_declaration name: (${typeName}) @name) @definition.type
(enum_declaration name: (identifier) @name) @definition.type
${topLevelConsts()}
[(identifier) (${typeName}) (property_identifier) (shorthand_property_identifier)] @reference
`;
}

/**
 * Module-level `const` declarations of JavaScript and TypeScript, exported or not: a function
 * when the value is an arrow function or a function expression, else a constant (the extractor
 * drops `let` and `var`).
 */
function topLevelConsts(): string {
  const fn = '[(arrow_function) (function_expression) (generator_function)]';
  return `
(program (lexical_declaration (variable_declarator name: (identifier) @name value: ${fn})) @definition.function)
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name value: ${fn})) @definition.function))
(program (lexical_declaration (variable_declarator name: (identifier) @name)) @definition.const)
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name)) @definition.const))
`;
}
