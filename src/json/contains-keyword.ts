import { _, str, type CodeKeywordDefinition, type KeywordErrorDefinition, type Name } from "ajv/dist/2020.js";
import { alwaysValidSchema, checkStrictMode, Type } from "ajv/dist/compile/util.js";

/**
 * `contains` as ajv 8 compiles it (draft 2020-12, `minContains` and `maxContains` included), but
 * forgetting each item's errors once the item is done. ajv keeps the errors of every item that
 * does not match until the keyword's end, even when a later item matches: a list growing with the
 * array, which it copies whole each time an item's check through a `$ref` fails (20,000 items
 * took 19 s, without `allErrors`). Only the keyword's own error is reported when it fails, as the
 * items that do not match are not errors by themselves. `test/unit/contains-keyword.test.ts` holds
 * its answers to ajv's.
 */

const containsError: KeywordErrorDefinition = {
  message: ({ params: { min, max } }) =>
    max === undefined
      ? str`must contain at least ${min} valid item(s)`
      : str`must contain at least ${min} and no more than ${max} valid item(s)`,
  params: ({ params: { min, max } }) =>
    max === undefined ? _`{minContains: ${min}}` : _`{minContains: ${min}, maxContains: ${max}}`,
};

/** The `contains` keyword for an Ajv2020 instance, in place of its own (remove that one first). */
export const itemwiseContains: CodeKeywordDefinition = {
  keyword: "contains",
  type: "array",
  schemaType: ["object", "boolean"],
  before: "uniqueItems",
  trackErrors: true,
  error: containsError,
  code(cxt) {
    const { gen, parentSchema, data, it } = cxt;
    const schema = cxt.schema as boolean | object;
    const { minContains, maxContains } = parentSchema as { minContains?: number; maxContains?: number };
    const min = minContains ?? 1;
    const max = maxContains;
    const len = gen.const("len", _`${data}.length`);
    cxt.setParams({ min, max });
    if (max === undefined && min === 0) {
      checkStrictMode(it, `"minContains" == 0 without "maxContains": "contains" keyword ignored`);
      return;
    }
    if (max !== undefined && min > max) {
      checkStrictMode(it, `"minContains" > "maxContains" is always invalid`);
      cxt.fail();
      return;
    }
    if (alwaysValidSchema(it, schema)) {
      cxt.pass(max === undefined ? _`${len} >= ${min}` : _`${len} >= ${min} && ${len} <= ${max}`);
      return;
    }

    it.items = true;
    const valid = gen.name("valid");
    if (max === undefined && min === 1) {
      validateItems(valid, () => gen.if(valid, () => gen.break()));
    } else if (min === 0) {
      gen.let(valid, true);
      if (max !== undefined) gen.if(_`${data}.length > 0`, validateItemsWithCount);
    } else {
      gen.let(valid, false);
      validateItemsWithCount();
    }
    cxt.result(valid, () => cxt.reset());

    function validateItemsWithCount(): void {
      const itemValid = gen.name("_valid");
      const count = gen.let("count", 0);
      validateItems(itemValid, () => gen.if(itemValid, () => checkLimits(count)));
    }

    function validateItems(itemValid: Name, block: () => void): void {
      gen.forRange("i", 0, len, (i) => {
        cxt.subschema({ keyword: "contains", dataProp: i, dataPropType: Type.Num, compositeRule: true }, itemValid);
        // The one change from ajv's: an item that does not match leaves no error behind.
        gen.if(_`!${itemValid}`, () => cxt.reset());
        block();
      });
    }

    function checkLimits(count: Name): void {
      gen.code(_`${count}++`);
      if (max === undefined) {
        gen.if(_`${count} >= ${min}`, () => gen.assign(valid, true).break());
      } else {
        gen.if(_`${count} > ${max}`, () => gen.assign(valid, false).break());
        if (min === 1) gen.assign(valid, true);
        else gen.if(_`${count} >= ${min}`, () => gen.assign(valid, true));
      }
    }
  },
};
