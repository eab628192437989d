/** A noun phrase with its indefinite article, for error texts: "an order purchase event", "a pageview event". */
export function withArticle(phrase: string): string {
  return `${/^[aeiou]/i.test(phrase) ? 'an' : 'a'} ${phrase}`;
}
