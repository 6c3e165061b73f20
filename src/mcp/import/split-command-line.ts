/**
 * Splits a command line into words without a shell: words are separated by whitespace; single
 * quotes keep everything up to the next single quote literally; double quotes keep whitespace and
 * honour `\"` and `\\` inside; outside quotes a backslash escapes the next character. No variables,
 * globs, pipes or redirections are expanded. Throws an Error on an unterminated quote or a trailing
 * backslash.
 */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  for (let index = 0; index < line.length; index++) {
    const char = line[index] as string;
    if (char === "'") {
      const end = line.indexOf("'", index + 1);
      if (end < 0) throw new Error("a single quote is not closed");
      word += line.slice(index + 1, end);
      inWord = true;
      index = end;
    } else if (char === '"') {
      index++;
      for (; ; index++) {
        if (index >= line.length) throw new Error("a double quote is not closed");
        const inner = line[index] as string;
        if (inner === '"') break;
        if (inner === "\\" && (line[index + 1] === '"' || line[index + 1] === "\\")) {
          word += line[index + 1];
          index++;
        } else {
          word += inner;
        }
      }
      inWord = true;
    } else if (char === "\\") {
      if (index + 1 >= line.length) throw new Error("a backslash ends the command");
      word += line[index + 1];
      index++;
      inWord = true;
    } else if (/\s/.test(char)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else {
      word += char;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}
