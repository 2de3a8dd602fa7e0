// Task lists as users write them (`--tasks 3,7-9`): a table of texts and the indexes they name, one
// of texts refused with the part at fault, and indexes written back in the shortest form.

import { describe, expect, it } from "vitest";
import { formatTaskList, parseTaskList, TaskListError } from "../../../../src/common/model/task-list.ts";

describe("parseTaskList", () => {
  it.each<[string, number[]]>([
    ["3", [3]],
    ["0", [0]],
    ["3,7-9", [3, 7, 8, 9]],
    ["7-9,3", [3, 7, 8, 9]],
    [" 3 , 7-9 ", [3, 7, 8, 9]],
    ["5-5", [5]],
    ["1,1,2", [1, 2]],
    ["2-4,3-6", [2, 3, 4, 5, 6]],
  ])("%j names %j", (text, indexes) => {
    expect(parseTaskList(text)).toEqual(indexes);
  });

  it.each<[string, string]>([
    ["", "the list of tasks is empty"],
    ["  ", "the list of tasks is empty"],
    ["3,", '"" is not a task index or a range'],
    ["a", '"a" is not a task index or a range'],
    ["-3", '"-3" is not a task index or a range'],
    ["3-", '"3-" is not a task index or a range'],
    ["1.5", '"1.5" is not a task index or a range'],
    ["9-7", '"9-7" runs backwards (write 7-9)'],
    ["0-2000000", "the list names more than 1000000 tasks"],
    ["99999999999999999999", '"99999999999999999999" is too large'],
  ])("refuses %j: %s", (text, message) => {
    expect(() => parseTaskList(text)).toThrow(TaskListError);
    expect(() => parseTaskList(text)).toThrow(message);
  });

  it("takes the most indexes a list may name as a parameter", () => {
    expect(parseTaskList("0-9", 10)).toHaveLength(10);
    expect(() => parseTaskList("0-10", 10)).toThrow("more than 10 tasks");
  });
});

describe("formatTaskList", () => {
  it.each<[number[], string]>([
    [[3], "3"],
    [[3, 7, 8, 9], "3, 7-9"],
    [[9, 3, 8, 7], "3, 7-9"],
    [[1, 2], "1, 2"],
    [[0, 1, 2, 4, 5], "0-2, 4, 5"],
    [[2, 2, 3, 4], "2-4"],
    [[], ""],
  ])("%j is written %j", (indexes, text) => {
    expect(formatTaskList(indexes)).toBe(text);
  });

  it("reads back as the same indexes", () => {
    const indexes = [0, 1, 2, 5, 9, 10, 11, 12, 20];
    expect(parseTaskList(formatTaskList(indexes))).toEqual(indexes);
  });
});
